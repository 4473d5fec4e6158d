-- SES verified the address meanwhile: recorded, if it is still the user's address.
UPDATE notification_contacts SET email_status = 'verified'
WHERE user_id = %(user_id)s AND email = %(email)s AND email_status = 'pending'
